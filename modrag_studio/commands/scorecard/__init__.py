"""``modrag scorecard``: a folder scored in one command (one page of HTML)."""
