"""A VM's browser console: the page (noVNC) and the websocket it connects through (``consumers``)."""
