package engine

import "github.com/xdsengine/xdsengine/registry"

// metrics is the engine's metric recorder; the zero value records nothing.
type metrics struct{}

func (m *metrics) serverFailure(c *channel)                                                {}
func (m *metrics) fallback(a *authority, from, to *channel)                                {}
func (m *metrics) resourceUpdates(c *channel, t registry.ResourceType, valid, invalid int) {}
