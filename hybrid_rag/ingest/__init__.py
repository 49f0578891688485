"""Ingestion: walk and load files or zips, chunk them, drop near-duplicates, write the store."""
