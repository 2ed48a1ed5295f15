"""Ways to embed the resolver in a server's launch pipeline."""
