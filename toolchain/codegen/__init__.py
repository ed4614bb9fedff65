"""C emission: view objects (context.py), Jinja filters (filters.py), C names (cnames.py) and
the renderer that writes the model library and the test firmware (emit.py)."""
