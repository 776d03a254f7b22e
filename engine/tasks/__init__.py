"""Floor 5: running tasks and chores on top of navigation, and tasks that other programs provide (ALAS)."""
