import { expect } from 'chai';
import { parseVlanList, VlanListError } from '../../../../drivers/switch/ssh/vlans';
import { formatVlanList } from '../../../../drivers/switch/vlans';

describe('VLAN lists as switches print them', () => {
  it('expands ranges (HIL read 2-5 as the two VLANs 2 and 5)', () => {
    expect(parseVlanList('2-5,7')).to.deep.equal([2, 3, 4, 5, 7]);
    expect(parseVlanList('1001-1003,1005')).to.deep.equal([1001, 1002, 1003, 1005]);
  });

  it('takes odd spacing, wrapped lines and junk after an id', () => {
    expect(parseVlanList(' 10, 2000')).to.deep.equal([10, 2000]);
    expect(parseVlanList(' 23 - 25')).to.deep.equal([23, 24, 25]);
    expect(parseVlanList('1,25-26,40-41,\n   200,301-303')).to.deep.equal([1, 25, 26, 40, 41, 200, 301, 302, 303]);
    expect(parseVlanList('1015 (Inactive)')).to.deep.equal([1015]);
    expect(parseVlanList('5,5,3')).to.deep.equal([3, 5]);
  });

  it('reads none and empty as no VLAN, and every spelling of "all" as all', () => {
    for (const none of ['none', 'NONE', '', '  ']) expect(parseVlanList(none), none).to.deep.equal([]);
    for (const all of ['ALL', 'All', 'all', '1-4094', '1-4093', '1-4000,4001-4094']) expect(parseVlanList(all), all).to.equal('all');
    expect(parseVlanList('2-4094')).to.be.an('array').with.length(4093);
  });

  it('refuses what it does not understand', () => {
    for (const bad of ['abc', '0-5', '4000-4095', '7-3', '1;2']) expect(() => parseVlanList(bad), bad).to.throw(VlanListError);
  });

  it('formats lists as ranges', () => {
    expect(formatVlanList([2, 3, 4, 5, 7])).to.equal('2-5,7');
    expect(formatVlanList([])).to.equal('none');
    expect(formatVlanList('all')).to.equal('all');
    expect(formatVlanList([7, 3, 5, 4, 3])).to.equal('3-5,7');
    expect(formatVlanList(parseVlanList('2-4094') as number[])).to.equal('2-4094');
  });
});
