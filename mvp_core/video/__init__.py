"""Video in: decode (decord, PyAV fallback), scan a folder, the content-addressed frame store, preview clips."""
