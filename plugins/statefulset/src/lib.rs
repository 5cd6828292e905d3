//! Built-in StatefulSet controller.
