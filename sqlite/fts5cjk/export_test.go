package fts5cjk

// ShortcutLists exposes the shortcut's code point lists to the tests.
var ShortcutLists = shortcutLists

var SetRankFlushMin = setRankFlushMin

var RangesRead = rangesRead

var LensKept = lensKept

var SetLensLoad = setLensLoad

var SrcKept = srcKept

var SparesTaken = sparesTaken
