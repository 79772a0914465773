@_exported import struct Logging.Logger
