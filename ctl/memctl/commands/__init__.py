"""The CLI's commands, one module per command or subgroup (`cli.py` loads each when it runs),
and the helpers they share: options, output and errors as exit codes, progress bars, tables."""
