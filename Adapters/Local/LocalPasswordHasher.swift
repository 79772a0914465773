public import MBaaSCore

/// The Local store's password hashes: scrypt in the format every server store of this package shares
/// (``MBaaSCore/ScryptPasswordHash``); the name stays for the ``LocalBackend/Options/passwordHashing`` setting.
public typealias LocalPasswordHasher = ScryptPasswordHash
