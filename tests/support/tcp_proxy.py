"""A TCP proxy that can freeze, to cut a client off from a real server the way a network
partition or a hung process would (the connection stays open, nothing gets through)."""

from __future__ import annotations

import select
import socket
import threading


class FreezableProxy:
    """Forwards ``127.0.0.1:<port>`` to ``upstream``; :meth:`freeze` stops all traffic (open
    connections stay open but silent, new ones are accepted and left silent), :meth:`thaw`
    resumes it."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self._upstream = upstream
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._flowing = threading.Event()
        self._flowing.set()
        self._closed = threading.Event()
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, name="proxy-accept", daemon=True).start()

    @property
    def hosts(self) -> str:
        return f"127.0.0.1:{self.port}"

    def freeze(self) -> None:
        self._flowing.clear()

    def thaw(self) -> None:
        self._flowing.set()

    def close(self) -> None:
        self._closed.set()
        self._flowing.set()
        self._listener.close()
        with self._lock:
            for sock in self._sockets:
                sock.close()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self._upstream)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._sockets += [client, server]
            threading.Thread(target=self._pump, args=(client, server), daemon=True).start()

    def _pump(self, a: socket.socket, b: socket.socket) -> None:
        peers = {a: b, b: a}
        try:
            while not self._closed.is_set():
                self._flowing.wait()
                readable, _, _ = select.select([a, b], [], [], 0.05)
                if not self._flowing.is_set():
                    continue  # frozen while we waited: hold what arrived
                for sock in readable:
                    data = sock.recv(65536)
                    if not data:
                        return
                    peers[sock].sendall(data)
        except OSError:
            return
        finally:
            a.close()
            b.close()
