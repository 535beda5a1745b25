//go:build !race

package proxy

const raceBuild = false
