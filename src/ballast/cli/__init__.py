"""The ``ballast`` command line: thin commands over the model, balance and runtime layers."""
