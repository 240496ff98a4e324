"""One module per page of the studio; each adds its components to a Blocks the server mounts."""
