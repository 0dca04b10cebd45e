"""torchbot release management: recipes, repository model, pins, builds, publishing."""
