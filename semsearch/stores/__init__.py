"""Storage backends behind the Store protocol (stores/base.py)."""
