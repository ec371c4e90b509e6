"""``ballast standalone``: a whole cluster in one process, with a demo load that makes the load
manager visibly balance."""
