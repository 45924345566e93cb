"""What generation reads and asks with: a chunk's content, subjects and key terms, the prompts
and how a reply is read, the corpus search; it imports nothing else of generation."""
