"""The capevolve command line: thin commands over the library."""
