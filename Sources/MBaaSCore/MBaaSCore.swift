@_exported import struct Logging.Logger

/// The MBaaSKit release this build comes from (`mbaas --version`).
public enum MBaaSKitVersion {
    public static let current = "0.9.0"
}
