"""Floor 5: the graph learns: popups the graph does not know become proposals, accepted ones become graph files."""
