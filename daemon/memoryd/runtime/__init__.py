"""Process concerns: configuration, logs, the state database, the heap, thread pools."""
