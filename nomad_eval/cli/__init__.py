"""Command-line plumbing: the Hydra entry, config checks, resolvers and sweep callbacks."""
