"""k2bench cluster: servers and clients for each datacenter, bare metal, on one LAN.

Every node is a bare-metal PC of one hardware type running Ubuntu 22.04, with one
interface on a single unshaped LAN. Nodes are named `<dc>-server-<i>` and
`<dc>-client-<i>` (dc in lower case); k2bench's terraform/emulab/portal.py builds the
inventory from those names.

Instructions:
Wait for the experiment to be ready; `terraform apply` then writes
terraform/emulab/inventory.json and the nodes' host keys in terraform/emulab/known_hosts. Wide-area latency between datacenters is added on the
nodes with `tc netem` (k2bench's netem role), not by the testbed: the LAN has no shaping, so
Emulab inserts no delay nodes. Each node publishes its SSH host keys at boot to
/proj/<project>/exp/<experiment>/k2bench-hostkeys/ for k2bench's known_hosts. Datacenter d (0-based, in the order of the `datacenters`
parameter) has LAN addresses 10.10.(d+1).0/24: servers .1 up, clients .101 up.
"""
# Kept in the k2bench repository (terraform/emulab/profile.py); the portal runs it with
# geni-lib to turn the parameters into a request RSpec. Python 2 and 3 both run it.

import geni.portal as portal
import geni.rspec.pg as pg

IMAGE = "urn:publicid:IDN+emulab.net+image+emulab-ops//UBUNTU22-64-STD"

# At boot every node publishes its SSH host public keys as "<node> <type> <key>" lines in
# /proj/<project>/exp/<experiment>/k2bench-hostkeys/<node>.keys, the experiment's directory
# on the testbed's file server; portal.py reads them from the ops host to write the
# cluster's known_hosts, so the keys come from the nodes themselves. The node, experiment
# and project come from Emulab's /var/emulab/boot/nickname (node.experiment.project).
# As root, the file is written as the owner of the experiment's directory (NFS maps root
# to nobody). One line: the rspec carries the command in an XML attribute. K2B_ROOT is
# empty on the nodes; the tests point it at a scratch tree.
PUBLISH_HOST_KEYS = "; ".join([
    "R=${K2B_ROOT:-}",
    "read nick < $R/var/emulab/boot/nickname || exit 1",
    "node=${nick%%.*}; rest=${nick#*.}; eid=${rest%%.*}; pid=${rest#*.}",
    "dir=$R/proj/$pid/exp/$eid/k2bench-hostkeys",
    "tmp=$(mktemp) || exit 1",
    "for k in $R/etc/ssh/ssh_host_*_key.pub; do printf '%s %s\\n' $node \"$(cut -d' ' -f1,2 $k)\" >> $tmp; done",
    "chmod 644 $tmp",
    "put=\"mkdir -p $dir && cp $tmp $dir/$node.keys.tmp && mv $dir/$node.keys.tmp $dir/$node.keys\"",
    "if [ $(id -u) = 0 ]; then su -s /bin/sh -c \"$put\" $(stat -c %U $R/proj/$pid/exp/$eid); "
    "else sh -c \"$put\"; fi",
    "rc=$?; rm -f $tmp; exit $rc",
])

pc = portal.Context()
pc.defineParameter("datacenters", "Datacenters, comma-separated, in topology order",
                   portal.ParameterType.STRING, "VA,CA,SP,LDN,TYO,SG")
pc.defineParameter("servers_per_dc", "Servers per datacenter",
                   portal.ParameterType.INTEGER, 2)
pc.defineParameter("clients_per_dc", "Client machines per datacenter",
                   portal.ParameterType.INTEGER, 8)
pc.defineParameter("hardware_type", "Hardware type of every node",
                   portal.ParameterType.NODETYPE, "d430")
params = pc.bindParameters()

dcs = [d.strip() for d in params.datacenters.split(",") if d.strip()]
if not dcs or len(set(d.lower() for d in dcs)) != len(dcs) or \
        not all(d.isalnum() and d[0].isalpha() for d in dcs):
    pc.reportError(portal.ParameterError(
        "datacenters: give distinct names of letters and digits, comma-separated (VA,CA,...)",
        ["datacenters"]))
if len(dcs) > 254:
    pc.reportError(portal.ParameterError("datacenters: at most 254", ["datacenters"]))
# The address plan below gives servers .1-.100 and clients .101-.254 of their DC's /24.
if not 1 <= params.servers_per_dc <= 100:
    pc.reportError(portal.ParameterError("servers_per_dc: from 1 to 100", ["servers_per_dc"]))
if not 1 <= params.clients_per_dc <= 154:
    pc.reportError(portal.ParameterError("clients_per_dc: from 1 to 154", ["clients_per_dc"]))
pc.verifyParameters()

request = pc.makeRequestRSpec()
lan = request.LAN("lan")
# Many nodes over several switches: accept less than line rate between switches rather
# than fail to map. Bandwidth, latency and loss stay unset: no shaping, no delay nodes.
lan.best_effort = True

for d, dc in enumerate(dcs):
    for role, count, first in (("server", params.servers_per_dc, 1),
                               ("client", params.clients_per_dc, 101)):
        for i in range(count):
            node = request.RawPC("%s-%s-%d" % (dc.lower(), role, i))
            node.hardware_type = params.hardware_type
            node.disk_image = IMAGE
            node.addService(pg.Execute(shell="sh", command=PUBLISH_HOST_KEYS))
            iface = node.addInterface("if0")
            iface.addAddress(pg.IPv4Address("10.10.%d.%d" % (d + 1, first + i), "255.255.0.0"))
            lan.addInterface(iface)

pc.printRequestRSpec(request)
