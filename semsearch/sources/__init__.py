"""Sources that turn folders and files into records."""
