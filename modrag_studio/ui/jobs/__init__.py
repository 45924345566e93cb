"""Long work off the GUI thread for every part of the studio (the lowest studio package:
it imports no other)."""
