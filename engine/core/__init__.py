"""Floor 0: what every other floor speaks: the error tree, results and the status vocabulary, run contexts with
deadlines and waits, stuck detection, redaction, paths."""
