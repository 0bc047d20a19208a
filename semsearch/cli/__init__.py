"""The semsearch command line (typer): a face, thin by design.

``app.py`` builds the one typer app; each command (group) is its own module, ``<name>_cmd.py``,
about 20 lines a command: parse, call the library, render. ``common.py`` holds the shared options,
the one mapping of errors to exit codes, and opening an index; ``progress.py`` draws progress on
stderr; ``filter_opts.py`` and ``rerank_opts.py`` are options several commands share.

Nothing in the library imports it. Heavy imports (the model, the stores' drivers, the servers)
happen inside the command that needs them, so ``semsearch --help`` starts fast.
"""
