/* The floor any pcap reader pays: libpcap's pcap_next_ex over every packet.
   cc -O2 -o pcap-loop pcap-loop.c -lpcap && ./pcap-loop FILE */
#include <pcap/pcap.h>
#include <stdio.h>

int main(int argc, char **argv) {
    char errors[PCAP_ERRBUF_SIZE];
    if (argc != 2) { fprintf(stderr, "usage: pcap-loop FILE\n"); return 64; }
    pcap_t *handle = pcap_open_offline_with_tstamp_precision(argv[1], PCAP_TSTAMP_PRECISION_NANO, errors);
    if (!handle) { fprintf(stderr, "pcap-loop: %s\n", errors); return 66; }
    struct pcap_pkthdr *header;
    const u_char *data;
    long packets = 0, bytes = 0;
    while (pcap_next_ex(handle, &header, &data) == 1) { packets++; bytes += header->caplen; }
    pcap_close(handle);
    printf("%ld packets, %ld bytes\n", packets, bytes);
    return 0;
}
