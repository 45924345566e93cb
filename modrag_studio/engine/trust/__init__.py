"""What a graph reaches outside its folder, and the store write modes it runs under."""
