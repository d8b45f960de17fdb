// Package attribution decides which engine target holds which GPU, so that
// GPU power, energy and cost can be charged to the engine that used them.
//
// Three methods, strongest first: explicit configuration (a target's gpus:
// list of UUIDs or indexes), the kubelet pod-resources API (which pod
// holds which device), and process matching (the GPU's compute PIDs, or an
// ancestor of them, hold the socket listening on the target's port). A GPU
// several targets hold is split between them by the generation tokens each
// produced in the interval, or equally when none produced any.
package attribution
