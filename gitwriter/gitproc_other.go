//go:build !linux

package gitwriter

// gitWorkingIn finds no git process where there is no /proc to look in:
// a lock that stays unchanged for leftAge is taken for a killed cycle's.
func gitWorkingIn(string) (pid int, name string, found bool) { return 0, "", false }
