package setters

// sysSyncfs is the number of syncfs(2), which package syscall does not
// define on this platform.
const sysSyncfs = 344
