"""The lab's simulated node: the one kubelet every node the lab simulates runs.

A pool machine (machines/), a VM (vm/) and the runner (executor/runnernode.py) each hand this kubelet a
NodeSource (view.py) and it keeps their Node, its status and its Lease (kubelet.py, manifest.py); the pods
bound to a node are watched and their deletions finished in one place (boundpods.py); podstatus.py is what a
kubelet reports of a pod. kube.py and watching.py are the client all of it speaks. Nothing here imports
machines/, executor/ or vm/ (.importlinter's lab contract).
"""
