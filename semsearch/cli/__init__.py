"""The semsearch command line (typer)."""
