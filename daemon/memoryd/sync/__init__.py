"""Sync: one workspace's memory on every machine, through git (docs/sync.md).

Imports go one way down: ``service`` (the daemon's timing) -> ``engine`` (one sync) ->
``apply`` / ``tree_merge`` / ``snapshot`` / ``purge`` -> ``merge_*`` / ``diff3`` / ``repo``
-> ``git`` (the CLI). Nothing here imports the rpc, jobs or index layers.
"""
