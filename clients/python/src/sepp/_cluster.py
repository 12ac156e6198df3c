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
* on UNAVAILABLE without `sepp-leader` (the node died, or lost its leadership), points the next
  attempt at another node, which names the new leader once there is one: the configured address
  after a leader it followed, or, once `get_server_info` listed the members, the next member.
  The UNAVAILABLE itself is raised for the retry policy to judge, and, once the client knows it
  talks to a cluster, for the policy's failover window (see `_retry`).

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
        # Whether the client knows it talks to a cluster (a node named the leader, or
        # get_server_info answered with `cluster`): its calls then ride a failover.
        self._in_cluster = False
        # The members' client addresses, from the last get_server_info that listed them.
        self._members: list[str] = []

    def follow_leaders(self, dialer: Dialer, seed: str) -> None:
        """Let calls follow redirects: the current channel was opened by `dialer` to `seed`."""
        self._dialer = dialer
        self._seed = seed
        self._current.target = seed

    @property
    def in_cluster(self) -> bool:
        """Whether the client knows it talks to a cluster and can follow its leader (a channel
        of the user's cannot, so retrying through a failover would not reach the new leader)."""
        return self._in_cluster and self._dialer is not None

    def learned_cluster(self, members: list[str]) -> None:
        """Records that the client talks to a cluster, and its members' client addresses (an
        empty list keeps those known)."""
        self._in_cluster = True
        members = sorted({member for member in members if member})
        if members:
            self._members = members

    def _next_after(self, node: Node) -> str | None:
        """Where to ask who leads after `node` failed naming no leader: the member after it in
        the known members (in address order, round), or, while none are known, the configured
        address unless `node` is that."""
        if not self._members:
            return None if node.target == self._seed else self._seed
        at = self._members.index(node.target) if node.target in self._members else -1
        following = self._members[(at + 1) % len(self._members)]
        return None if following == node.target else following

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
                self._in_cluster = True
                if not self._follow(node, leader, redirects):
                    raise
                redirects += 1
            finally:
                node.calls -= 1
                if node.retired and node.calls == 0:
                    await self._close_node(node)

    def open_stream(
        self,
        path: str,
        serializer: Callable[[Any], bytes],
        parser: Callable[[bytes], Any],
        metadata: tuple[tuple[str, str], ...] | None,
    ) -> tuple[Node, Any]:
        """Opens a bidirectional stream `path` on the current node; returns the node and the
        call. Hand the node to `stream_ended` once the stream has ended."""
        node = self._current
        method = node.channel.stream_stream(
            path, request_serializer=serializer, response_deserializer=parser
        )
        call = method(metadata=metadata)
        node.calls += 1
        return node, call

    async def stream_ended(
        self, node: Node, err: grpc.aio.AioRpcError | None, redirects: int
    ) -> bool:
        """Records the end of a stream `open_stream` opened on `node` (`err`: its failure, None
        if it ended cleanly), with the rule of `call`: UNAVAILABLE naming the leader switches to
        the leader, naming none points the next attempt at another node. Returns whether the
        stream should be opened again at once (on the leader): at most `MAX_REDIRECTS` times in
        a row (`redirects` so far)."""
        try:
            if err is None or err.code() != grpc.StatusCode.UNAVAILABLE:
                return False
            leader = leader_of(err)
            if leader is None:
                self._lost(node, err)
                return False
            self._in_cluster = True
            return self._follow(node, leader, redirects)
        finally:
            node.calls -= 1
            if node.retired and node.calls == 0:
                await self._close_node(node)

    def follow_named_leader(self, leader: str) -> bool:
        """Switch to `leader`, which a node named in an answer rather than in a failure (the
        cluster of its GetServerInfo); whether calls can go there."""
        return self._follow(self._current, leader, 0)

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
        """`node` answered UNAVAILABLE naming no leader (it is down, or lost its leadership):
        the next attempt asks another node who leads now. That is the configured address when
        `node` was a leader this client followed, or, once the members are known (from
        get_server_info), the next member, so that a client given the leader's own address
        reaches the others when that leader dies."""
        if self._dialer is None or self._seed is None or self._closed or self._current is not node:
            return
        target = self._next_after(node)
        if target is None:
            return
        _log.info(
            "the cluster node at %s is unavailable (%s); asking %s who leads",
            node.name,
            err.details(),
            target,
        )
        self._switch(Node(self._dialer.dial(target), target, self._bind))

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
