"""k2bench cluster: servers and clients for each datacenter, bare metal, on one LAN.

Every node is a bare-metal PC of one hardware type running Ubuntu 22.04, with one
interface on a single unshaped LAN. Nodes are named `<dc>-server-<i>` and
`<dc>-client-<i>` (dc in lower case); k2bench's terraform/emulab/portal.py builds the
inventory from those names.

Instructions:
Wait for the experiment to be ready, then run `terraform output -raw inventory` (or read
terraform/emulab/inventory.json). Wide-area latency between datacenters is added on the
nodes with `tc netem` (k2bench's netem role), not by the testbed: the LAN has no shaping, so
Emulab inserts no delay nodes. Datacenter d (0-based, in the order of the `datacenters`
parameter) has LAN addresses 10.10.(d+1).0/24: servers .1 up, clients .101 up.
"""
# Kept in the k2bench repository (terraform/emulab/profile.py); the portal runs it with
# geni-lib to turn the parameters into a request RSpec. Python 2 and 3 both run it.

import geni.portal as portal
import geni.rspec.pg as pg

IMAGE = "urn:publicid:IDN+emulab.net+image+emulab-ops//UBUNTU22-64-STD"

pc = portal.Context()
pc.defineParameter("datacenters", "Datacenters, comma-separated, in topology order",
                   portal.ParameterType.STRING, "VA,CA,SP,LDN,TYO,SG")
pc.defineParameter("servers_per_dc", "Servers per datacenter",
                   portal.ParameterType.INTEGER, 4)
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
            iface = node.addInterface("if0")
            iface.addAddress(pg.IPv4Address("10.10.%d.%d" % (d + 1, first + i), "255.255.0.0"))
            lan.addInterface(iface)

pc.printRequestRSpec(request)
