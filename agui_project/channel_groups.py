"""One message to several channel-layer groups, in as few round trips to Redis as one group takes.

channels_redis's `group_send` serves one group: it trims and reads the group's members (two round
trips), then trims and writes each member's channel (two more when it has any). An inbox notice
goes to three groups or more (the staff, the requester, the approver group), so it took six to
twelve round trips and, through redis-py's asyncio client, 670-1,560 µs of the web process's CPU
per decision, on the cores the decided run's worker needs at that moment. channels_redis has no
several-groups call, hence this one: the groups' members read in one pipeline per Redis host, then
one write per host for their channels, with channels_redis's own key mapping, serialization and
capacity rule (its Lua script, copied below). A socket in two of the groups gets the message once.
Any other channel layer gets one `group_send` per group.
"""

import logging
import time

from channels_redis.core import RedisChannelLayer

log = logging.getLogger(__name__)

# channels_redis 4.3's group_send script: a channel over its capacity is skipped (and counted)
_SEND = """
    local over_capacity = 0
    local current_time = ARGV[#ARGV - 1]
    local expiry = ARGV[#ARGV]
    for i=1,#KEYS do
        if redis.call('ZCOUNT', KEYS[i], '-inf', '+inf') < tonumber(ARGV[i + #KEYS]) then
            redis.call('ZADD', KEYS[i], current_time, ARGV[i])
            redis.call('EXPIRE', KEYS[i], expiry)
        else
            over_capacity = over_capacity + 1
        end
    end
    return over_capacity
"""


async def group_send_many(layer, groups, message):
    """layer.group_send(group, message) for each of `groups` (distinct), the members of all read
    together; a channel that is in several of them gets the message once."""
    groups = list(dict.fromkeys(groups))
    if not isinstance(layer, RedisChannelLayer):
        for group in groups:
            await layer.group_send(group, message)
        return
    channels = await _members(layer, groups)
    if not channels:
        return
    keys_by_host, payloads, capacities = layer._map_channel_keys_to_connection(channels, message)
    now = time.time()
    for index, keys in keys_by_host.items():
        connection = layer.connection(index)
        pipe = connection.pipeline(transaction=False)
        for key in keys:  # as group_send: messages past their expiry go first
            pipe.zremrangebyscore(key, min=0, max=int(now) - int(layer.expiry))
        await pipe.execute()
        over = await connection.eval(_SEND, len(keys), *keys, *(payloads[k] for k in keys),
                                     *(capacities[k] for k in keys), now, layer.expiry)
        if over:
            log.info("%s of %s channels over capacity in groups %s", over, len(channels), ", ".join(groups))


async def _members(layer, groups):
    """The channels of `groups`, each once, the lapsed memberships dropped first (as group_send)."""
    by_host = {}
    for group in groups:
        assert layer.require_valid_group_name(group), "Group name not valid"
        by_host.setdefault(layer.consistent_hash(group), []).append(layer._group_key(group))
    lapsed = int(time.time()) - layer.group_expiry
    channels = {}
    for index, keys in by_host.items():
        pipe = layer.connection(index).pipeline(transaction=False)
        for key in keys:
            pipe.zremrangebyscore(key, min=0, max=lapsed)
            pipe.zrange(key, 0, -1)
        replies = await pipe.execute()
        channels.update((name.decode("utf8"), None) for members in replies[1::2] for name in members)
    return list(channels)
