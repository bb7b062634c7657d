"""Schema evolution: classifying schema changes, lazy migrations, forks."""
