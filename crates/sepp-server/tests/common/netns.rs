//! Hosts of their own for the nodes of a cluster: one network namespace per node, each on two
//! networks (bridges in the test's namespace). The cluster network carries Raft between the
//! nodes; the client network carries the test's calls. Taking a node's link to the cluster
//! network down partitions it from the other nodes while the test can still reach it.

use std::process::Command;

/// The namespaces and bridges of one test, removed on drop.
pub struct Netns {
    tag: String,
    /// The second byte of the test's addresses: 10.<net>.1.<node> and 10.<net>.2.<node>.
    net: u8,
    count: u64,
}

fn ip(args: &[&str]) -> Result<(), String> {
    let output = Command::new("ip").args(args).output().map_err(|error| format!("cannot run ip: {error}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!("ip {}: {}", args.join(" "), String::from_utf8_lossy(&output.stderr).trim()))
    }
}

impl Netns {
    /// `count` namespaces, or why they cannot be made here (not root, no `ip`).
    pub fn create(count: u64) -> Result<Netns, String> {
        let pid = std::process::id();
        let netns = Netns { tag: format!("{:04x}", pid % 0xffff), net: 100 + (pid % 100) as u8, count };
        netns.remove();
        netns.build().inspect_err(|_| netns.remove())?;
        Ok(netns)
    }

    fn bridge(&self, network: char) -> String {
        format!("sp{}{network}", self.tag)
    }

    /// The host side of node `id`'s link to `network` ('c' cluster, 'a' clients).
    fn link(&self, network: char, id: u64) -> String {
        format!("sp{}{network}{id}", self.tag)
    }

    /// How many nodes (namespaces) there are.
    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn name(&self, id: u64) -> String {
        format!("sp{}n{id}", self.tag)
    }

    /// Node `id`'s address on the cluster network.
    pub fn cluster_ip(&self, id: u64) -> String {
        format!("10.{}.1.{id}", self.net)
    }

    /// Node `id`'s address on the client network.
    pub fn api_ip(&self, id: u64) -> String {
        format!("10.{}.2.{id}", self.net)
    }

    fn build(&self) -> Result<(), String> {
        for (network, subnet) in [('c', 1), ('a', 2)] {
            let bridge = self.bridge(network);
            ip(&["link", "add", &bridge, "type", "bridge"])?;
            ip(&["link", "set", &bridge, "up"])?;
            ip(&["addr", "add", &format!("10.{}.{subnet}.254/24", self.net), "dev", &bridge])?;
        }
        for id in 1..=self.count {
            let ns = self.name(id);
            ip(&["netns", "add", &ns])?;
            ip(&["-n", &ns, "link", "set", "lo", "up"])?;
            for (network, inside, address) in [('c', "c0", self.cluster_ip(id)), ('a', "a0", self.api_ip(id))] {
                let link = self.link(network, id);
                ip(&["link", "add", &link, "type", "veth", "peer", "name", inside, "netns", &ns])?;
                ip(&["link", "set", &link, "master", &self.bridge(network), "up"])?;
                ip(&["-n", &ns, "addr", "add", &format!("{address}/24"), "dev", inside])?;
                ip(&["-n", &ns, "link", "set", inside, "up"])?;
            }
        }
        Ok(())
    }

    /// Cuts node `id` off the cluster network: it reaches no other node, and none reaches it.
    pub fn cut(&self, id: u64) {
        ip(&["link", "set", &self.link('c', id), "down"]).expect("take the link down");
    }

    /// Joins node `id` to the cluster network again.
    pub fn heal(&self, id: u64) {
        ip(&["link", "set", &self.link('c', id), "up"]).expect("bring the link up");
    }

    fn remove(&self) {
        for id in 1..=self.count {
            let _ = ip(&["netns", "del", &self.name(id)]);
        }
        for network in ['c', 'a'] {
            let _ = ip(&["link", "del", &self.bridge(network)]);
        }
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        self.remove();
    }
}
