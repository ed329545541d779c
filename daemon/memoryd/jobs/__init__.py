"""Scheduled maintenance: hippocampus consolidation, transcript retention, fallback summaries.

``scheduler`` decides when (cron on the local wall clock), ``runner`` runs one job for one
workspace in a thread and records it (``history``), ``registry`` ties job names to their
implementations, which are imported only when a job first runs (the LLM client is heavy).
"""
