"""Django management commands of the agents app (commands/): seed_demo creates the demo users,
groups, accounts and a subscription, and converges when run again."""
