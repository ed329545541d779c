"""The markdown files themselves: what a memory line says about itself and where it came from."""
