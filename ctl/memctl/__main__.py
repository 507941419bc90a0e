from memctl.cli import cli

cli()
