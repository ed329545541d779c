"""Memory that curates and forgets (docs/lifecycle.md): forget, export and import, the
journal that makes a change to several files whole or absent, and what is kept of it."""
