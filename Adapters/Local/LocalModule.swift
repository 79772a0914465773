import MBaaSCore

/// GRDB also exports a `Record` class; inside this module `Record` is always the core's.
typealias Record = MBaaSCore.Record
