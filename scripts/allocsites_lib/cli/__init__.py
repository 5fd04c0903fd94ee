"""The command line: argument parsing and dispatch to the stages."""
