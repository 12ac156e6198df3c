"""Following the leader of a sepp cluster: which channel a call goes to.

In a cluster only the leader serves the queue service. Another node answers UNAVAILABLE, having
executed nothing, with the leader's client address (`host:port`) in the response metadata entry
`sepp-leader` when it knows the leader (during an election it knows none and names none). So
every attempt of every call goes through `Nodes.call`, which:

* sends it on the current channel;
* on UNAVAILABLE with `sepp-leader`, opens a channel to the leader with the settings of the
  configured one (TLS, credentials, options), makes it the current one and re-sends the call
  there at once, at most `MAX_REDIRECTS` times per attempt; then the UNAVAILABLE is raised like
  any other. A re-sent call is not a retry: the follower executed nothing, so this holds for
  every call, reserve and draining dead letters too;
* on UNAVAILABLE without `sepp-leader` from a leader it followed (the leader died, or lost its
  leadership), goes back to the configured address for the next attempt, which asks that node
  who leads now. The UNAVAILABLE itself is raised for the retry policy to judge.

A client built on a channel of the user's (`from_channel`) has no way to dial another address:
it raises the UNAVAILABLE as it is.

Switching is safe under concurrent calls: only a call that failed on the current channel
switches (one switch wins; the others re-send where it points). A channel switched away from is
closed once the last call running on it has ended, so those calls finish or fail normally.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import grpc

from . import _log
from ._channel import Dialer

# The metadata entry a follower's UNAVAILABLE names the leader in.
LEADER_METADATA = "sepp-leader"
# Redirects one attempt of a call follows before its UNAVAILABLE is raised.
MAX_REDIRECTS = 3

Unary = Callable[..., Awaitable[Any]]
# The queue service's methods bound to a channel, by RPC name.
Bind = Callable[[grpc.aio.Channel], Mapping[str, Unary]]


def leader_of(err: grpc.aio.AioRpcError) -> str | None:
    """The leader address an UNAVAILABLE names in `sepp-leader`, or None.

    The entry travels in the trailers; a trailers-only response carries it in its one header
    block, so the initial metadata is read when the trailers have none. A value that is not a
    plain `host:port` (empty, with a scheme, a path or blanks) counts as none.
    """
    for metadata in (err.trailing_metadata(), err.initial_metadata()):
        for key, value in metadata or ():
            if key.lower() != LEADER_METADATA:
                continue
            if isinstance(value, bytes):
                value = value.decode("ascii", "replace")
            address = value.strip()
            if address and "/" not in address and not any(c.isspace() for c in address):
                return address
            return None
    return None


class Node:
    """A channel to one node, its bound methods, and the calls running on it."""

    def __init__(self, channel: grpc.aio.Channel, target: str | None, bind: Bind) -> None:
        self.channel = channel
        self.target = target  # None: a channel the user built
        self.methods = bind(channel)
        self.calls = 0
        self.retired = False

    @property
    def name(self) -> str:
        return self.target if self.target is not None else "the given channel"


class Nodes:
    """The node calls go to now, and following the cluster's leader (see the module)."""

    def __init__(self, channel: grpc.aio.Channel, bind: Bind) -> None:
        self._bind = bind
        self._dialer: Dialer | None = None  # None: cannot dial (a channel of the user's)
        self._seed: str | None = None  # the address the client was configured with
        self._current = Node(channel, None, bind)
        self._retired: set[Node] = set()  # switched away from, not yet closed
        self._closed = False

    def follow_leaders(self, dialer: Dialer, seed: str) -> None:
        """Let calls follow redirects: the current channel was opened by `dialer` to `seed`."""
        self._dialer = dialer
        self._seed = seed
        self._current.target = seed

    @property
    def channel(self) -> grpc.aio.Channel:
        """The channel calls go to now."""
        return self._current.channel

    async def call(
        self,
        rpc: str,
        request: Any,
        timeout: float | None,
        metadata: tuple[tuple[str, str], ...] | None,
    ) -> Any:
        """One attempt of the call `rpc`, following up to `MAX_REDIRECTS` redirects of
        followers. Raises the last `grpc.aio.AioRpcError`."""
        redirects = 0
        while True:
            node = self._current
            node.calls += 1
            try:
                return await node.methods[rpc](request, timeout=timeout, metadata=metadata)
            except grpc.aio.AioRpcError as err:
                if err.code() != grpc.StatusCode.UNAVAILABLE:
                    raise
                leader = leader_of(err)
                if leader is None:
                    self._lost(node, err)
                    raise
                if not self._follow(node, leader, redirects):
                    raise
                redirects += 1
            finally:
                node.calls -= 1
                if node.retired and node.calls == 0:
                    await self._close_node(node)

    def _follow(self, node: Node, leader: str, redirects: int) -> bool:
        """Whether the call that `node` redirected to `leader` goes again (on the leader)."""
        if self._dialer is None or self._closed:
            return False  # a channel of the user's cannot be pointed elsewhere
        if redirects >= MAX_REDIRECTS:
            _log.warning(
                "gave up following the cluster leader after %d redirects (last from %s to %s)",
                redirects,
                node.name,
                leader,
            )
            return False
        if self._current is not node:
            return True  # another call has switched already: go where it points
        if leader == node.target:
            return True  # the node names itself: ask it again
        _log.info("following the cluster leader to %s (from %s)", leader, node.name)
        self._switch(Node(self._dialer.dial(leader), leader, self._bind))
        return True

    def _lost(self, node: Node, err: grpc.aio.AioRpcError) -> None:
        """`node` answered UNAVAILABLE naming no leader: if it is a leader this client followed,
        the next attempt asks the configured node who leads now."""
        if (
            self._dialer is None
            or self._seed is None
            or self._closed
            or self._current is not node
            or node.target == self._seed
        ):
            return
        _log.info(
            "the cluster leader at %s is unavailable (%s); going back to %s",
            node.name,
            err.details(),
            self._seed,
        )
        self._switch(Node(self._dialer.dial(self._seed), self._seed, self._bind))

    def _switch(self, node: Node) -> None:
        """Make `node` the current one. The calling attempt still runs on the old one, so the
        old channel is closed when that call (or the last other one on it) ends."""
        old = self._current
        self._current = node
        old.retired = True
        self._retired.add(old)

    async def _close_node(self, node: Node) -> None:
        if node in self._retired:
            self._retired.discard(node)
            await node.channel.close()

    async def close(self) -> None:
        """Close every channel; calls still running fail with a cancellation."""
        self._closed = True
        for node in list(self._retired):
            await self._close_node(node)
        await self._current.channel.close()
