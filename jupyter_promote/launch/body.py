"""A job request as a JSON body (the JobRequest schema of ``server/openapi.yaml``) made into a request.

Temporary: forwards to the server's payload validation until that moves here.
"""

from ..server.payload import request_from_payload as request_from_body

__all__ = ["request_from_body"]
