"""packetsim"""
