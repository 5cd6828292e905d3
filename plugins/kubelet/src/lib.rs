//! Built-in kubelet (node agent) controller.
