"""redis-py's Bloom filter API against a server at host:port (argv[1]),
as a redis-py user writes it: a default connection (RESP2), then the
setup reads redis-py's users make (INFO cluster, MODULE LIST), create,
fill, dump and reload a filter. Prints "ok" when every check passes;
server/clients_connect_test.go runs it."""

import sys

import redis

host, port = sys.argv[1].rsplit(":", 1)
r = redis.Redis(host=host, port=int(port))


def check(what, got, want):
    if got != want:
        sys.exit("%s: got %r, want %r" % (what, got, want))


check("ping", r.ping(), True)
check("INFO cluster", r.info("cluster"), {"cluster_enabled": 0})
modules = r.module_list()
check("MODULE LIST names", [m[b"name"] for m in modules], [b"bf"])
if modules[0][b"ver"] < 20000:
    sys.exit("MODULE LIST: bf version %r, want RedisBloom 2.x or later" % modules[0][b"ver"])
check("INFO modules", [m["name"] for m in r.info("modules")["modules"]], ["bf"])

bf = r.bf()
check("create", bf.create("src", 0.001, 1000), True)
try:
    bf.create("src", 0.001, 1000)
    sys.exit("create of an existing key: no error")
except redis.ResponseError as e:
    check("create of an existing key", str(e), "item exists")
check("add", bf.add("src", "a"), 1)
check("add again", bf.add("src", "a"), 0)
check("madd", bf.madd("src", "b", "c", "a"), [1, 1, 0])
check("exists", bf.exists("src", "a"), 1)
check("mexists", bf.mexists("src", "a", "b", "zzz"), [1, 1, 0])
check("insert", bf.insert("ins", ["x", "y"], capacity=50, error=0.01, expansion=4), [1, 1])
check("insert nocreate", bf.insert("ins", ["z"], noCreate=True), [1])
info = bf.info("src")
check("info capacity", info.capacity, 1000)
check("info items", info.insertedNum, 3)
check("info filters", info.filterNum, 1)
check("info expansion", info.expansionRate, 2)
check("card", r.execute_command("BF.CARD", "src"), 3)

it = 0
while True:
    it, data = bf.scandump("src", it)
    if it == 0:
        break
    check("loadchunk", bf.loadchunk("dst", it, data), b"OK")
check("reloaded mexists", bf.mexists("dst", "a", "b", "c"), [1, 1, 1])
check("reloaded info items", bf.info("dst").insertedNum, 3)

p = r.pipeline(transaction=True)
p.execute_command("BF.ADD", "tx", "a")
p.execute_command("BF.EXISTS", "tx", "a")
check("transaction", p.execute(), [1, 1])
print("ok")
