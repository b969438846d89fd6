"""signal_game: a Lewis referential game, one message per target, and its metric."""
