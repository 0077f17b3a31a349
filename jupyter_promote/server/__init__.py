"""The server door: the Jupyter server extension (app), its REST handlers, the job manager over the one
launcher and lifecycle, and the durable job store.
"""
