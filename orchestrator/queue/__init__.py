"""The lab's queue of campaigns, its workers and the leases of its hosts' slots in the store."""
